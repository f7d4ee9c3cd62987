"""Traces received over OTLP/HTTP, decoded and mapped to answer records (issue 28, groundwork).

Pure code in the rules layer: `decode` turns a request body into spans (or a `DecodeError`
carrying the HTTP status the receiver answers), `mapping` turns the spans of one complete trace
into a `TraceRecord`. Nothing here touches the database; the receiver, sampling and promotion
build on these two modules.
"""
