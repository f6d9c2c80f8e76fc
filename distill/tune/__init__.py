"""The static model trained toward its teacher: the teacher's sentence embeddings, kept during the encoding
pass (teacher.py), and the training of a run's vectors toward them (train.py, its options in options.py)."""
