"""Expert verification in Label Studio (multi-stage review, adjudication, finalized splits). Nothing is exported yet."""
