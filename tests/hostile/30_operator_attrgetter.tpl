# hostile template 30_operator_attrgetter: must be refused or contained
from operator import attrgetter
from verifleet.schemas import BaseAnswer
attrgetter("__globals__")(len)

class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "safe"}

    def verify(self) -> bool:
        return False
