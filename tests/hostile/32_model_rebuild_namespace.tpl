# hostile template 32_model_rebuild_namespace: must be refused or contained
from verifleet.schemas import BaseAnswer


class Answer(BaseAnswer):
    value: str
    other: "Later" = None

    def model_post_init(self, context):
        self.correct = {"value": "safe"}

    def verify(self) -> bool:
        return False


Answer.model_rebuild(_types_namespace={"Later": "open('__MARKER__', 'w')"}, _parent_namespace_depth=3)
