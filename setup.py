"""Everything is declared in pyproject.toml; this only installs streamlib-spark-path.pth
into site-packages (see _streamlib_spark_path.py), for wheels and editable installs alike."""
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.editable_wheel import editable_wheel

PTH = "streamlib-spark-path.pth"


class build_py_with_pth(build_py):
    def run(self):
        super().run()
        if not self.editable_mode:
            self.copy_file(PTH, os.path.join(self.build_lib, PTH), preserve_mode=False)

    def get_outputs(self, include_bytecode=True):
        extra = [] if self.editable_mode else [os.path.join(self.build_lib, PTH)]
        return super().get_outputs(include_bytecode) + extra


class editable_wheel_with_pth(editable_wheel):
    # An editable wheel holds only what lands in its unpacked directory (setuptools
    # writes its namespace .pth files there the same way).
    def _install_namespaces(self, installation_dir, pth_prefix):
        super()._install_namespaces(installation_dir, pth_prefix)
        shutil.copy(PTH, installation_dir)


setup(cmdclass={"build_py": build_py_with_pth, "editable_wheel": editable_wheel_with_pth})
