#!/bin/sh
# A learner's server in the course's image (Zero to JupyterHub runs this: singleuser.cmd in
# values.yaml). First the learner's own copy of the notebooks in ~/course, made or brought
# up to date (course.tools.learner_copy: edited notebooks are never overwritten), then the
# server with whatever arguments the spawner gave. A failed copy is said in the pod's log
# and the server starts all the same: the learner's work is in their home either way.
cd "$HOME" || exit 1
python -m course.tools.learner_copy --source /opt/course/notebooks --dest "$HOME/course" ||
  echo "start-singleuser: the notebooks in ~/course could not be brought up to date" >&2
# a terminal's shell that is not a login shell: a login shell reads /etc/profile, whose PATH
# loses the course's Python
exec jupyterhub-singleuser '--ServerApp.terminado_settings={"shell_command": ["/bin/bash"]}' "$@"
