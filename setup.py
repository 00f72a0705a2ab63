"""Everything is declared in pyproject.toml; this only adds streamlib-spark-path.pth to
the wheel's root, so pip installs it into site-packages (see _streamlib_spark_path.py).

An editable install (``pip install -e``) has no supported place for it: setuptools
builds editable wheels from the packages alone. ``make`` copies it into the venv
instead; without it everything works, Spark's processes for streamlib only start slower.
"""
import os

from setuptools import setup
from setuptools.command.build_py import build_py

PTH = "streamlib-spark-path.pth"


class build_py_with_pth(build_py):
    def run(self):
        super().run()
        if not self.editable_mode:
            self.copy_file(PTH, os.path.join(self.build_lib, PTH), preserve_mode=False)

    def get_outputs(self, include_bytecode=True):
        extra = [] if self.editable_mode else [os.path.join(self.build_lib, PTH)]
        return super().get_outputs(include_bytecode) + extra


setup(cmdclass={"build_py": build_py_with_pth})
