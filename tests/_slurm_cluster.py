"""A real one-node Slurm cluster on this machine, for the launcher tests: Debian's slurm-wlm
(slurmctld, slurmd) and munge, configured and started in a temporary directory, localhost only,
with a munge key generated for it, and stopped (every daemon, every job) at the end.

    with SlurmCluster(tmp_path) as cluster:
        env = cluster.env            # SLURM_CONF for sbatch, squeue, scontrol, scancel
        cluster.scontrol("show", "job", "12")

Needs root (slurmd starts jobs as their user) and the packages (``apt-get install slurm-wlm
munge``); :func:`unavailable` says why the cluster cannot start here, or None.
"""

from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
import time
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "scontrol", "squeue", "scancel")
PARTITIONS = ("debug", "batch")  # debug is the default
NODE = "vitbench-node"
GPUS = 2  # generic resources the node advertises (stand-in device files: jobs see no real GPU)
MEMORY_MB = 4000


def unavailable() -> str | None:
    """Why a cluster cannot start here (None when it can)."""
    missing = [d for d in DAEMONS if shutil.which(d) is None and not Path("/usr/sbin", d).exists()]
    if missing:
        return f"Slurm is not installed ({', '.join(missing)} missing): apt-get install slurm-wlm munge"
    if os.geteuid() != 0:
        return "slurmd must run as root to start jobs"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _binary(name: str) -> str:
    return shutil.which(name) or str(Path("/usr/sbin", name))


class SlurmCluster:
    """slurmctld + slurmd + munged under ``root`` (a temporary directory); ``env`` points the
    Slurm commands at it."""

    def __init__(self, root: Path, *, start_timeout_s: float = 60.0):
        self.root = Path(root)
        self.start_timeout_s = start_timeout_s
        self.processes: list[subprocess.Popen] = []
        self.conf = self.root / "slurm.conf"
        self.munge_socket = self.root / "munge" / "munge.socket"
        self.ctld_port, self.slurmd_port = _free_port(), _free_port()
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        for key in [k for k in self.env if k.startswith(("SLURM_", "SBATCH_", "SALLOC_", "SRUN_"))]:
            if key != "SLURM_CONF":  # this process may itself run under Slurm: not its cluster
                del self.env[key]

    # -- configuration ------------------------------------------------------------------------
    def _write_config(self) -> None:
        for sub in ("munge", "state", "spool", "log"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        os.chmod(self.root / "munge", 0o700)
        key = self.root / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))  # the cluster's own munge key
        os.chmod(key, 0o400)
        host = socket.gethostname().split(".")[0]
        cpus = os.cpu_count() or 1
        self.conf.write_text("\n".join([
            "ClusterName=vitbench-test",
            f"SlurmctldHost={host}(127.0.0.1)",
            f"SlurmctldPort={self.ctld_port}",
            f"SlurmdPort={self.slurmd_port}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={self.munge_socket}",
            f"StateSaveLocation={self.root / 'state'}",
            f"SlurmdSpoolDir={self.root / 'spool'}",
            f"SlurmctldPidFile={self.root / 'slurmctld.pid'}",
            f"SlurmdPidFile={self.root / 'slurmd.pid'}",
            f"SlurmctldLogFile={self.root / 'log' / 'slurmctld.log'}",
            f"SlurmdLogFile={self.root / 'log' / 'slurmd.log'}",
            "SlurmctldDebug=info",
            "MailProg=/bin/true",
            "SlurmdDebug=info",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "MpiDefault=none",
            "SwitchType=switch/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            "SchedulerType=sched/backfill",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core_Memory",
            "SchedulerParameters=sched_interval=1",
            "ReturnToService=2",
            "SlurmdParameters=config_overrides",
            "MinJobAge=600",
            "DefMemPerCPU=500",  # a job that asks for no memory does not take the whole node
            "KillWait=2",  # scancel: SIGTERM, then SIGKILL 2 s later
            "InactiveLimit=0",
            "GresTypes=gpu",
            f"NodeName={NODE} NodeAddr=127.0.0.1 NodeHostname={host} CPUs={cpus} RealMemory={MEMORY_MB} Gres=gpu:{GPUS} State=UNKNOWN",
            *(f"PartitionName={p} Nodes={NODE} Default={'YES' if i == 0 else 'NO'} MaxTime=INFINITE State=UP" for i, p in enumerate(PARTITIONS)),
            "",
        ]))
        # gres/gpu counts device files: character devices standing in for GPUs (jobs get no GPU)
        devices = self.root / "dev"
        devices.mkdir(exist_ok=True)
        for index in range(GPUS):
            path = devices / f"gpu{index}"
            if not path.exists():
                os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # as /dev/null
        (self.root / "gres.conf").write_text(f"AutoDetect=off\nNodeName={NODE} Name=gpu File={devices}/gpu[0-{GPUS - 1}]\n")

    # -- lifetime -----------------------------------------------------------------------------
    def _spawn(self, *argv: str) -> subprocess.Popen:
        log = open(self.root / "log" / f"{Path(argv[0]).name}.out", "ab")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen(list(argv), env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        self.processes.append(proc)
        return proc

    def start(self) -> SlurmCluster:
        self._write_config()
        munge = self.root / "munge"
        self._spawn(
            _binary("munged"), "-F", "--force", f"--socket={self.munge_socket}", f"--key-file={munge / 'munge.key'}",
            f"--pid-file={munge / 'munged.pid'}", f"--log-file={self.root / 'log' / 'munged.log'}",
            f"--seed-file={munge / 'munged.seed'}",
        )
        self._wait(lambda: self.munge_socket.exists(), "munged")
        self._spawn(_binary("slurmctld"), "-D", "-i", "-f", str(self.conf))
        self._wait(lambda: self.scontrol("ping", check=False).returncode == 0 and "UP" in self.scontrol("ping", check=False).stdout, "slurmctld")
        self._spawn(_binary("slurmd"), "-D", "-N", NODE, "-f", str(self.conf))
        self._wait(self._node_ready, "slurmd")
        return self

    def _node_ready(self) -> bool:
        out = self.scontrol("show", "node", NODE, check=False).stdout
        return "State=IDLE" in out or "State=MIXED" in out

    def _wait(self, ready, what: str) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if any(p.poll() is not None for p in self.processes):
                break
            if ready():
                return
            time.sleep(0.25)
        logs = "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-2000:]}" for p in sorted((self.root / "log").glob("*")))
        self.stop()
        raise RuntimeError(f"{what} did not start in {self.start_timeout_s:.0f} s\n{logs}")

    def stop(self) -> None:
        if self.conf.exists() and any(p.poll() is None for p in self.processes):
            subprocess.run([_binary("scancel"), "--full", "--quiet", "-u", "root"], env=self.env, capture_output=True, timeout=30)
        for proc in reversed(self.processes):
            if proc.poll() is None:
                proc.terminate()
        for proc in reversed(self.processes):
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        self.processes.clear()

    def __enter__(self) -> SlurmCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- commands -----------------------------------------------------------------------------
    def command(self, name: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run([_binary(name), *args], env=self.env, capture_output=True, text=True, timeout=60, check=check)

    def scontrol(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return self.command("scontrol", *args, check=check)

    def job(self, job_id: str) -> dict[str, str]:
        """``scontrol show job -o ID`` as a dict (the first record: one array task)."""
        text = self.scontrol("show", "job", "-o", str(job_id)).stdout.splitlines()[0]
        fields = {}
        for part in text.split():
            if "=" in part:
                key, value = part.split("=", 1)
                fields.setdefault(key, value)
        return fields


__all__ = ["GPUS", "NODE", "PARTITIONS", "SlurmCluster", "unavailable"]
