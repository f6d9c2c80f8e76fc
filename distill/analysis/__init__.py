"""How contextual each layer is (Ethayarajh 2019, section 4): measures from a run's occurrences, and their report."""
