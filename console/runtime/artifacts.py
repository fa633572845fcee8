"""An Execution's artifact, served as a download from the file artifact store."""

from __future__ import annotations

import mimetypes

from django.http import FileResponse
from django.http.response import HttpResponseBase

from console.errors import error_page
from console.http import HtmxHttpRequest, page
from console.runtime.previews import download_name
from console.runtime.reads import read_artifact_ref
from storage import ArtifactError
from storage.artifacts import ArtifactCorrupt
from storage.default import default_artifacts


@page
def artifact_download(
    request: HtmxHttpRequest, execution_id: str, artifact_id: str
) -> HttpResponseBase:
    """Stream an artifact attached to this Execution, always as a download: the bytes
    are whatever an executor wrote, so the browser must never render them."""
    x, ref = read_artifact_ref(execution_id, artifact_id)  # NotFound (404) unless attached
    artifacts = default_artifacts()
    try:
        # Content-Length comes from the reference: refuse content recorded otherwise.
        if artifacts.stat(ref).size != ref.size:
            raise ArtifactCorrupt(f"its stored size differs from the reference's {ref.size}")
        stream = artifacts.open(ref)
    except ArtifactError as exc:
        message = (
            f"The content of artifact {ref.id} ({ref.media_type}, {ref.size} bytes) of "
            f"Execution {execution_id} cannot be served: {exc}. The Execution "
            "and its Work are unaffected."
        )
        return error_page(request, 404, "Artifact content missing", message)
    extension = mimetypes.guess_extension(ref.media_type) or ".bin"
    response = FileResponse(
        stream,
        as_attachment=True,
        filename=download_name(x, ref, extension),
        content_type=ref.media_type,
    )
    response["Content-Length"] = str(ref.size)
    response["X-Content-Type-Options"] = "nosniff"
    response["Cache-Control"] = "private, max-age=0"
    return response
