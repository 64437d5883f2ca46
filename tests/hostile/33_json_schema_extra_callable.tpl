# hostile template 33_json_schema_extra_callable: must be refused or contained
from pydantic import ConfigDict
from verifleet.schemas import BaseAnswer


class Answer(BaseAnswer):
    value: str
    model_config = ConfigDict(json_schema_extra=lambda schema: schema.update({"leak": open("__SECRET__").read()}))

    def model_post_init(self, context):
        self.correct = {"value": "safe"}

    def verify(self) -> bool:
        return False
