# The victim: an honest template whose source and ground truth carry a marker
# (VICTIM-SOURCE) that must never show up in another job's results.
from verifleet.templates import BaseAnswer

SECRET_NOTE = "VICTIM-SOURCE-41d7"


class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "Paris", "note": SECRET_NOTE}

    def verify(self) -> bool:
        return self.value.strip().lower() == "paris"
