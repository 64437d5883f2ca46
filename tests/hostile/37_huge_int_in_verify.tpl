# hostile template 37_huge_int_in_verify: must be refused or contained
from verifleet.schemas import BaseAnswer


class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "safe"}

    def verify(self) -> bool:
        n = 10
        return (n ** n ** n ** n) > 0
