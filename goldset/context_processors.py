from goldset.conf import PROJECT_TUNABLES, tunable
from goldset.models import Tier


class ProtocolValues:
    """``{{ protocol_values.KAPPA_GATE }}``: the values in force in one project (the
    installation's without one), each read when a template asks for it."""

    def __init__(self, project):
        self.project = project

    def __getitem__(self, name: str):
        if name not in PROJECT_TUNABLES:
            raise KeyError(name)
        return tunable(name, project=self.project)

    def __contains__(self, name) -> bool:
        return name in PROJECT_TUNABLES


def protocol(request):
    """Protocol codes for templates, so none is spelled out in one (``case.tier == Tier.GOLD``),
    and the protocol numbers in force in the request's project (``request.project``, set by
    workbench.middleware.AccessMiddleware; the installation's on pages outside a project):
    ``protocol_project`` is what ``{% protocol %}`` reads, ``protocol_values`` the values."""
    project = getattr(request, "project", None)
    return {"Tier": Tier, "protocol_project": project, "protocol_values": ProtocolValues(project)}
