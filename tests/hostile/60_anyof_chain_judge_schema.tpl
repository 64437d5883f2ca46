# hostile template 60_anyof_chain_judge_schema: must be refused or contained
# The judge schema is the template's to write: each definition is "either of two
# references to the next", forty deep, so a value that fails the last one is
# checked 2**40 times by a host that follows them all.
from verifleet.schemas import BaseAnswer


class Answer(BaseAnswer):
    value: str

    @classmethod
    def model_json_schema(cls, *args, **kwargs):
        chain = {}
        for i in range(40):
            step = {"$ref": "#/$defs/D" + str(i + 1)}
            chain["D" + str(i)] = {"anyOf": [step, dict(step)]}
        chain["D40"] = {"type": "integer"}
        return {
            "type": "object",
            "title": "Answer",
            "properties": {"value": {"$ref": "#/$defs/D0"}},
            "required": ["value"],
            "$defs": chain,
        }

    def model_post_init(self, context):
        self.correct = {"value": "safe"}

    def verify(self) -> bool:
        return False
