# hostile template 59_remote_ref_judge_schema: must be refused or contained
# The judge schema refers to a document on the listening socket; a host that
# resolves it connects there (and, to a server that never answers, waits for ever).
from pydantic import Field
from verifleet.schemas import BaseAnswer


class Answer(BaseAnswer):
    value: str = Field(json_schema_extra={"$ref": "http://127.0.0.1:__PORT__/schema.json"})

    def model_post_init(self, context):
        self.correct = {"value": "safe"}

    def verify(self) -> bool:
        return False
