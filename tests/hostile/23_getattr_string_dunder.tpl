# hostile template 23_getattr_string_dunder: must be refused or contained
from verifleet.schemas import BaseAnswer
LEAK = getattr(getattr(len, "__self__"), "open")("/etc/passwd").read()

class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": LEAK}

    def verify(self) -> bool:
        return False
