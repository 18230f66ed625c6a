"""harness from Python: the `harness` binary this wheel installs, and a pytest plugin.

The plugin (``agent_loop_harness.pytest_plugin``, registered with pytest on install) gives a
``harness_serve`` fixture: it serves a scenario's scripted model for one test, hands out its
base URLs, and judges every conversation the test had with it as ``harness exec`` does.
"""

import os
import shutil
import sysconfig

__all__ = ["find_harness_bin"]


def find_harness_bin() -> str:
    """The path of the ``harness`` executable: ``$HARNESS_BIN`` when set, else the one this
    wheel installed beside the Python interpreter's scripts, else the first on ``PATH``."""
    override = os.environ.get("HARNESS_BIN")
    if override:
        return override
    name = "harness.exe" if os.name == "nt" else "harness"
    # The interpreter's own scripts folder first (a virtual environment's `bin`), then the
    # user schemes `pip install --user` writes to.
    folders = [sysconfig.get_path("scripts")]
    for scheme in ("posix_user", "nt_user", "osx_framework_user"):
        try:
            folders.append(sysconfig.get_path("scripts", scheme))
        except KeyError:
            continue
    for folder in folders:
        candidate = os.path.join(folder, name)
        if os.path.isfile(candidate):
            return candidate
    found = shutil.which("harness")
    if found:
        return found
    raise FileNotFoundError(
        "the harness executable was not found: install the agent-loop-harness wheel into this "
        "environment, or set HARNESS_BIN to its path"
    )
