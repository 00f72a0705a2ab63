"""Check that a Java runtime Spark can use (17 or newer) is installed.

``python -m streamlib.spark.java_check`` exits 0 silently when Java is fine, else
prints one line saying what is wrong and how to fix it, and exits 1.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from typing import Optional

MIN_JAVA = 17
_INSTALL_HINT = "install a JDK (e.g. apt-get install openjdk-17-jre-headless)"


class JavaNotFound(RuntimeError):
    """Java is missing or too old for Spark."""


def find_java() -> Optional[str]:
    """Path of the ``java`` Spark will launch: ``$JAVA_HOME/bin/java``, else ``java`` on PATH.

    >>> find_java() is None or find_java().endswith("java")
    True
    """
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = os.path.join(java_home, "bin", "java")
        return candidate if os.access(candidate, os.X_OK) else None
    return shutil.which("java")


def java_major_version(java: str) -> Optional[int]:
    """Major version reported by ``java -version`` (``1.8`` → 8), or None if unreadable.

    >>> java = find_java()
    >>> java is None or java_major_version(java) >= 8
    True
    """
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not match:
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def java_problem() -> Optional[str]:
    """One line describing why Spark cannot start a JVM here, or None if Java is fine.

    >>> java_problem() is None or java_problem().startswith("streamlib needs Java")
    True
    """
    prefix = f"streamlib needs Java {MIN_JAVA}+:"
    java = find_java()
    if java is None:
        if os.environ.get("JAVA_HOME"):
            return (f"{prefix} JAVA_HOME={os.environ['JAVA_HOME']} has no executable bin/java;"
                    f" fix JAVA_HOME or {_INSTALL_HINT}")
        return f"{prefix} no `java` on PATH and JAVA_HOME unset; {_INSTALL_HINT}"
    version = java_major_version(java)
    if version is None:
        return f"{prefix} `{java} -version` did not report a version; {_INSTALL_HINT}"
    if version < MIN_JAVA:
        return f"{prefix} {java} is Java {version}; {_INSTALL_HINT} and point JAVA_HOME at it"
    return None


def require_java() -> None:
    """Raise :class:`JavaNotFound` with a one-line explanation unless Java 17+ is usable.

    >>> require_java()  # silent when Java is fine
    """
    problem = java_problem()
    if problem:
        raise JavaNotFound(problem)


def main() -> int:
    problem = java_problem()
    if problem:
        print(problem, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
