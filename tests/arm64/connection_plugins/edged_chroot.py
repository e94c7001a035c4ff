"""An Ansible connection into a folder holding another root, through chroot(8).

edged's arm64 test (tests/test_arm64.py) runs the real role against an emulated Debian root
with it; ansible-core has no chroot connection of its own. Every command and file goes through
`chroot ROOT env -i VARS...`, so the host's environment (its pip configuration points at x86
wheels) never reaches the root, and paths are resolved by the root's own view of its symlinks.
"""

from __future__ import annotations

import os
import subprocess
from typing import Any

from ansible.errors import AnsibleConnectionFailure, AnsibleError, AnsibleFileNotFound
from ansible.module_utils.common.text.converters import to_bytes, to_text
from ansible.plugins.connection import ConnectionBase
from ansible.utils.display import Display

DOCUMENTATION = """
    name: edged_chroot
    short_description: run tasks inside a root folder with chroot (edged's arm64 test)
    description:
        - Runs each command as C(chroot ROOT env -i VARS... /bin/sh -c CMD) and moves files
          through the command's standard input and output. Needs root on the controller.
    author: edged contributors
    options:
        root:
            description: The folder that holds the root.
            required: true
            vars:
                - name: edged_chroot_root
        environment:
            description: The whole environment of every command (nothing else is passed).
            type: dict
            default: {PATH: /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin, HOME: /root}
            vars:
                - name: edged_chroot_env
    extends_documentation_fragment:
        - connection_pipelining
"""

display = Display()


class Connection(ConnectionBase):
    """Commands and files inside `root`, as the controller's user (root)."""

    transport = "edged_chroot"
    has_pipelining = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.default_user = "root"

    def _connect(self) -> Connection:
        root = self.get_option("root")
        if not os.path.isdir(os.path.join(root, "bin")):
            raise AnsibleConnectionFailure(f"{root} does not look like a root (no bin/)")
        if not self._connected:
            display.vvv(f"CHROOT INTO {root}", host=self._play_context.remote_addr)
            self._connected = True
        return self

    def _argv(self, command: list[str]) -> list[str]:
        env = [f"{k}={v}" for k, v in self.get_option("environment").items()]
        return ["chroot", self.get_option("root"), "env", "-i", *env, *command]

    def exec_command(self, cmd: str, in_data: bytes | None = None,
                     sudoable: bool = True) -> tuple[int, bytes, bytes]:
        super().exec_command(cmd, in_data=in_data, sudoable=sudoable)
        display.vvv(f"EXEC {to_text(cmd)}", host=self._play_context.remote_addr)
        # As the local connection runs it on the controller: through a shell (inside the root).
        done = subprocess.run(self._argv(["/bin/sh", "-c", to_text(cmd)]), input=in_data or b"",
                              capture_output=True, check=False)
        return done.returncode, done.stdout, done.stderr

    def put_file(self, in_path: str, out_path: str) -> None:
        super().put_file(in_path, out_path)
        display.vvv(f"PUT {in_path} TO {out_path}", host=self._play_context.remote_addr)
        if not os.path.isfile(to_bytes(in_path)):
            raise AnsibleFileNotFound(f"file or module does not exist: {in_path}")
        with open(to_bytes(in_path), "rb") as source:
            done = subprocess.run(self._argv(["/bin/sh", "-c", 'cat > "$1"', "sh", out_path]),
                                  stdin=source, capture_output=True, check=False)
        if done.returncode != 0:
            raise AnsibleError(f"cannot write {out_path} in the root: {to_text(done.stderr)}")

    def fetch_file(self, in_path: str, out_path: str) -> None:
        super().fetch_file(in_path, out_path)
        display.vvv(f"FETCH {in_path} TO {out_path}", host=self._play_context.remote_addr)
        with open(to_bytes(out_path), "wb") as target:
            done = subprocess.run(self._argv(["cat", in_path]), stdout=target,
                                  stderr=subprocess.PIPE, check=False)
        if done.returncode != 0:
            raise AnsibleError(f"cannot read {in_path} in the root: {to_text(done.stderr)}")

    def reset(self) -> None:
        pass

    def close(self) -> None:
        self._connected = False
