"""The child process of course.runtime.watchdog.isolated, started as a module.

    python -m course.runtime.isolated_child FD      (stdin: sys.path, then (fn, args, kwargs))

It takes the parent's sys.path, so the function (sent by name) imports as it did there, runs
it through watchdog's child loop, and sends what happened over the pipe FD. Being its own
entry point, it never re-runs the parent's main script.
"""

import pickle
import sys
import time
import traceback
from multiprocessing.connection import Connection


def main(fd: int) -> None:
    conn = Connection(fd, readable=False)
    try:
        sys.path[:] = pickle.load(sys.stdin.buffer)
        fn, args, kwargs = pickle.load(sys.stdin.buffer)
    except BaseException as exc:  # fn could not be imported here: say so, do not hang
        conn.send(("started", time.time()))
        conn.send(
            (
                "error",
                type(exc).__name__,
                f"could not receive the function: {exc}",
                traceback.format_exc(),
            )
        )
        conn.close()
        return
    from course.runtime import watchdog

    watchdog._child(conn, fn, args, kwargs)


if __name__ == "__main__":
    main(int(sys.argv[1]))
