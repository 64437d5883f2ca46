# hostile template 63_huge_parsed_values: must be refused or contained
# The template rewrites the judge's value into 8 MB when the answer is built, so
# the parsed values copied into the result are huge whatever the judge said.
from verifleet.schemas import BaseAnswer


class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "safe"}
        self.value = "z" * (8 * 1024 * 1024)

    def verify(self) -> bool:
        return False
