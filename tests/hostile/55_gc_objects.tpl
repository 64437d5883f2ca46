# hostile template 55_gc_objects: must be refused or contained
import gc
from verifleet.schemas import BaseAnswer
LEAK = [o for o in gc.get_objects() if isinstance(o, dict) and "open" in o]

class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "safe"}

    def verify(self) -> bool:
        return False
