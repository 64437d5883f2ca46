# hostile template 62_huge_verify_output: must be refused or contained
# verify() fails with an 8 MB message and field_results() names 8 MB of fields:
# both would be copied into every result.
from verifleet.schemas import BaseAnswer


class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "safe"}

    def verify(self) -> bool:
        raise ValueError("y" * (8 * 1024 * 1024))

    def field_results(self):
        return {"f" * 1024 + str(i): False for i in range(8 * 1024)}
