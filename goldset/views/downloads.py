"""The HTTP response of a file download, the same for the page and the API: streamed, named
``attachment; filename=…``, with its length and the sha256 of the bytes sent."""

from django.http import StreamingHttpResponse

from goldset.services.blinded_downloads import Download


def file_response(download: Download) -> StreamingHttpResponse:
    response = StreamingHttpResponse(download.chunks, content_type=download.content_type)
    response["Content-Disposition"] = f'attachment; filename="{download.filename}"'
    response["Content-Length"] = str(download.size)
    response["X-Checksum-SHA256"] = download.sha256
    return response
