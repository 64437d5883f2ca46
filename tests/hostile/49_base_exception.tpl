# hostile template 49_base_exception: must be refused or contained
from verifleet.schemas import BaseAnswer
class Escape(BaseException):
    pass

class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "safe"}

    def verify(self) -> bool:
        raise Escape("out of the handler")
