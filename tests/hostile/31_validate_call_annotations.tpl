# hostile template 31_validate_call_annotations: must be refused or contained
from pydantic import validate_call
from verifleet.schemas import BaseAnswer

@validate_call
def checked(x: "open('__MARKER__', 'w')") -> None:
    return None

class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "safe"}

    def verify(self) -> bool:
        return False
