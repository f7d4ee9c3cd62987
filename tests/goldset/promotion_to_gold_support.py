"""A labeled, trace-born answer record for the promotion-to-gold tests: a trace of the real
OpenTelemetry SDK sampled by a feedback rule, whose retrieved documents AU-6 and AC-2 are in the
corpus, settled as acceptable (as the labeling protocol leaves it)."""

from goldset.models import AnswerRecord, Domain, ReceivedTrace
from goldset.services.sampling import create_sampling_rule
from tests.factories import BlockFactory, BlockVersionFactory, DocumentFactory
from tests.goldset.rules.traces_support import CORPUS
from tests.goldset.sampling_support import pipeline, send


def corpus(project):
    domain = Domain.objects.get_or_create(project=project, slug="controls", name="Controls")[0]
    versions = {}
    for block_id, text in CORPUS.items():
        document = DocumentFactory(domain=domain, document_id=f"doc-{block_id}")
        versions[block_id] = BlockVersionFactory(
            block=BlockFactory(block_id=block_id, document=document), text=text
        )
    return versions


def trace_born_record(project, admin, *, status="final", acceptability="acceptable"):
    create_sampling_rule(project=project, actor=admin, name="unhappy-users", kind="feedback")
    send(project, pipeline(**{"goldset.feedback": "thumbs_down"}))
    trace = ReceivedTrace.objects.get(project=project, status="mapped")
    AnswerRecord.objects.filter(pk=trace.record_id).update(
        status=status, final_acceptability=acceptability, final_grounding="fully_grounded"
    )
    return AnswerRecord.objects.get(pk=trace.record_id), trace
