# hostile template 25_rebind_guard_via_view: must be refused or contained
import re
from verifleet.schemas import BaseAnswer
setattr(re, "compile", lambda *a, **k: __import__("os"))

class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "safe"}

    def verify(self) -> bool:
        return False
