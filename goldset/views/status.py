"""The status of a page that re-renders its form (issue 24: form errors answer 422): 422 when
the form comes back from a refused POST — a field error, a rule a service refused, a reference
to another project's object — and 200 for the GET that shows it. Views call it only on the
path that re-renders (a POST that succeeded redirects)."""


def form_status(request) -> int:
    return 422 if request.method == "POST" else 200
