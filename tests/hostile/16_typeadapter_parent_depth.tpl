# hostile template 16_typeadapter_parent_depth: must be refused or contained
from pydantic import TypeAdapter
from verifleet.schemas import BaseAnswer


class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "safe"}

    def verify(self) -> bool:
        TypeAdapter("open('__MARKER__', 'w')", _parent_depth=4)
        return False
