# hostile template 61_huge_ground_truth: must be refused or contained
# A few hundred bytes of source whose ground truth is 8 MB: copied into every
# result of the question, it would fill the runner's memory and the store.
from verifleet.schemas import BaseAnswer


class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "x" * (8 * 1024 * 1024)}

    def verify(self) -> bool:
        return False
