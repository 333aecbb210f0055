"""Document-level (non-local) tagging: documents, non-local factors over a
document's labels, annealed samplers that decode the product of a chain CRF
and those factors (Finkel, Grenager & Manning 2005), and the two-stage
alternative that feeds a second CRF with document statistics of the first
one's output (Krishnan & Manning 2006)."""
