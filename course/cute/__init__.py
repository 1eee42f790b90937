"""The one bridge that runs CuTe DSL on a CPU: trace a @cute.jit function (no launch),
convert what CuTe computed into course.models objects, and extract who owns what
from a kernel's own TiledCopy / TiledMMA."""
