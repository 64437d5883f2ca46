# hostile template 12_forwardref_typing_extensions: must be refused or contained
from typing_extensions import ForwardRef
from verifleet.schemas import BaseAnswer
ForwardRef("open('__MARKER__', 'w')")._evaluate({}, {}, frozenset())

class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "safe"}

    def verify(self) -> bool:
        return False
