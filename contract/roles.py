"""A streamlet's role in a pipeline, from its shape: it reads the workload's source topic, or it has outlets, or
it has none (an egress). pipeline.json records it; the checker reconciles hops by it."""

INGRESS = "ingress"
PROCESSOR = "processor"
EGRESS = "egress"
ROLES = (INGRESS, PROCESSOR, EGRESS)
