"""Build streamlib's placement jar (``streamlib/spark/jars/streamlib-placement.jar``) from
``jvm/placement/src`` with ``javac``, against the Spark jars of this interpreter's PySpark.

The jar is committed (a pip install has no compiler to count on), so ``make`` rebuilds it
only when its sources are newer, and a machine without ``javac`` keeps the committed one.
Its bytes depend only on the sources and the compiler: entries sorted, fixed timestamps, and
the compiler's version in the manifest (``tests/spark/test_placement.py`` rebuilds it and compares
when the same compiler is at hand).

    python tools/placement_jar.py [--out PATH] [--if-javac]
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ROOT / "jvm" / "placement" / "src"
JAR = ROOT / "streamlib" / "spark" / "jars" / "streamlib-placement.jar"
#: Spark 4 runs on Java 17 and later
RELEASE = "17"
#: zip entries' date: fixed, so the same classes give the same jar
EPOCH = (1980, 1, 1, 0, 0, 0)


def javac_version(javac: str) -> str:
    """``javac -version``'s answer, e.g. ``javac 17.0.15``."""
    done = subprocess.run([javac, "-version"], capture_output=True, text=True, check=True)
    return (done.stdout or done.stderr).strip()


def spark_classpath() -> str:
    import pyspark

    return os.path.join(os.path.dirname(pyspark.__file__), "jars", "*")


def compile_classes(javac: str, into: Path) -> None:
    sources = sorted(str(p) for p in SOURCES.rglob("*.java"))
    subprocess.run([javac, "--release", RELEASE, "-nowarn", "-cp", spark_classpath(), "-d", str(into),
                    *sources], check=True)


def write_jar(classes: Path, out: Path, compiler: str) -> None:
    manifest = f"Manifest-Version: 1.0\r\nCreated-By: {compiler} --release {RELEASE}\r\n\r\n"
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_suffix(".jar.partial")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as jar:
        entries = [("META-INF/MANIFEST.MF", manifest.encode())]
        entries += [(p.relative_to(classes).as_posix(), p.read_bytes())
                    for p in sorted(classes.rglob("*.class"))]
        for name, data in entries:
            info = zipfile.ZipInfo(name, EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            jar.writestr(info, data)
    os.replace(partial, out)


def build(out: Path = JAR, javac: str = "javac") -> None:
    """Compile the sources and write the jar to ``out``."""
    compiler = javac_version(javac)
    with tempfile.TemporaryDirectory(prefix="streamlib-placement-") as classes:
        compile_classes(javac, Path(classes))
        write_jar(Path(classes), out, compiler)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=JAR)
    parser.add_argument("--if-javac", action="store_true",
                        help="without javac on PATH, keep the committed jar (one line) instead of failing")
    args = parser.parse_args()
    javac = shutil.which("javac")
    if javac is None:
        if args.if_javac and args.out.exists():
            print(f"no javac on PATH: keeping {args.out.relative_to(ROOT)} as committed")
            return 0
        print("building the placement jar needs javac (a JDK 17 or later) on PATH", file=sys.stderr)
        return 1
    build(args.out, javac)
    print(f"built {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
