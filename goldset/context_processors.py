from goldset.models import Tier


def protocol(request):
    """Protocol codes for templates, so none is spelled out in one (``case.tier == Tier.GOLD``)."""
    return {"Tier": Tier}
