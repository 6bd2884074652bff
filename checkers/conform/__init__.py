"""Conformance harness: any implementation of Kafka's classic group coordinator against the spec.

`adapter`   the implementation adapter protocol, and the two that ship (spec, runtime)
`reference` the spec as the reference (the scenario runner's spec target, one step at a time)
`lockstep`  an implementation and the spec side by side, failing at the first difference
`machine`   the Hypothesis state machine generated from the table's triggers
`harness`   running it: examples, seed, the shrunk scenario of a divergence
`plugin`    the pytest plugin (fixture `conform`)
"""
