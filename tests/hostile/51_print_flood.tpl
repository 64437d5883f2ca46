# hostile template 51_print_flood: must be refused or contained
from verifleet.schemas import BaseAnswer


class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "safe"}

    def verify(self) -> bool:
        for _ in range(2000):
            print("x" * 100000)
        return False
