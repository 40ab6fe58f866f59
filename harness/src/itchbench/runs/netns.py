"""A private network namespace for one run, made by the run and gone with it.

Held by `unshare --net sleep infinity` (started with PDEATHSIG), entered by
`nsenter --net=/proc/PID/ns/net`. Its loopback is brought up and set to
accept replayed frames addressed to 127.0.0.1 (route_localnet, accept_local),
as docs/transports.md records. Nothing on the host changes.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Sequence

from .procs import ProcessGroup

SYSCTLS = [
    "net.ipv4.conf.all.route_localnet=1",
    "net.ipv4.conf.lo.route_localnet=1",
    "net.ipv4.conf.all.accept_local=1",
    "net.ipv4.conf.lo.accept_local=1",
]


class NetnsError(RuntimeError):
    pass


class PrivateNetns:
    def __init__(self, group: ProcessGroup) -> None:
        self._holder = group.start("netns-holder", ["unshare", "--net", "--", "sleep", "infinity"])
        self._datagrams_read = 0  # udp_datagrams_read's last count
        self.path = Path(f"/proc/{self._holder.pid}/ns/net")
        # Until unshare has made the namespace, the holder is still in ours:
        # anything entered before then would change the host. Wait for the
        # namespace identity ("net:[inode]") to differ from ours.
        host = os.readlink("/proc/self/ns/net")
        deadline = time.monotonic() + 5
        while True:
            try:
                if os.readlink(self.path) != host:
                    break
            except OSError:
                pass
            if self._holder.poll() is not None or time.monotonic() > deadline:
                raise NetnsError("could not create a network namespace (unshare --net failed; needs root)")
            time.sleep(0.005)
        self.run(["ip", "link", "set", "lo", "up"])
        self.run(["sysctl", "-q", "-w", *SYSCTLS])
        if "UP" not in self.run(["ip", "-o", "link", "show", "lo"]).split(">")[0]:
            raise NetnsError("the namespace's loopback did not come up")

    def carry_multicast(self) -> None:
        """Multicast on the namespace's loopback: the interface takes it, and groups route there (a receiver
        joins on 127.0.0.1)."""
        self.run(["ip", "link", "set", "lo", "multicast", "on"])
        self.run(["ip", "route", "add", "224.0.0.0/4", "dev", "lo"])

    @property
    def holder_pid(self) -> int:
        return self._holder.pid

    def wrap(self, cmd: Sequence[str]) -> list[str]:
        return ["nsenter", f"--net={self.path}", "--", *cmd]

    def run(self, cmd: Sequence[str]) -> str:
        proc = subprocess.run(self.wrap(cmd), capture_output=True, text=True)
        if proc.returncode != 0:
            raise NetnsError(f"{' '.join(cmd)} in the run's namespace failed: {proc.stderr.strip()}")
        return proc.stdout

    @property
    def holder(self) -> subprocess.Popen:
        """The process that holds the namespace: it must outlive the run's use of it."""
        return self._holder

    def udp_datagrams_read(self) -> int:
        """UdpInDatagrams of the namespace, from its holder's /proc (no process started): it grows while any socket
        there reads a datagram — while a gateway is still taking its feed. With the holder gone (its end is the
        run's failure, named by whoever watches it), the last count read."""
        try:
            text = Path(f"/proc/{self._holder.pid}/net/snmp").read_text()
        except OSError:
            return self._datagrams_read
        names, values = (line.split() for line in text.splitlines() if line.startswith("Udp: "))
        self._datagrams_read = int(values[names.index("InDatagrams")])
        return self._datagrams_read

    def udp_counters(self) -> dict[str, int]:
        """The namespace's UDP counters (all zero when it was made)."""
        data = json.loads(self.run(["nstat", "-a", "-z", "-j"]))
        counters = data.get("kernel", data)
        keys = ["UdpInDatagrams", "UdpInErrors", "UdpRcvbufErrors", "UdpNoPorts", "UdpIgnoredMulti", "UdpOutDatagrams"]
        return {k: int(counters.get(k, 0)) for k in keys}
