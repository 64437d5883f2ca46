# hostile template 50_huge_answer: must be refused or contained
from verifleet.schemas import BaseAnswer


class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "x" * (200 * 1024 * 1024)}

    def verify(self) -> bool:
        return False
