# hostile template 18_parse_raw_pickle: must be refused or contained
from verifleet.schemas import BaseAnswer


class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "safe"}

    def verify(self) -> bool:
        payload = b"cos\nsystem\n(S'touch __MARKER__'\ntR."
        Answer.parse_raw(payload, proto="pickle", allow_pickle=True)
        return False
