# hostile template 36_huge_int_in_body: must be refused or contained
from verifleet.schemas import BaseAnswer
HUGE = 10 ** 10 ** 10

class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "safe"}

    def verify(self) -> bool:
        return False
