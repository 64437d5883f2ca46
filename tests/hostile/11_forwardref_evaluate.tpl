# hostile template 11_forwardref_evaluate: must be refused or contained
import typing
from verifleet.schemas import BaseAnswer
typing.ForwardRef("__import__('os').system('touch __MARKER__')")._evaluate({}, {}, frozenset())

class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "safe"}

    def verify(self) -> bool:
        return False
