"""What a reviewer reads instead of the code: the documents, the canonical flows, the site, the
guards in words, and counterexamples."""
