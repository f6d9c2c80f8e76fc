"""The encoding pass: sampled sentences -> batches -> the model -> each occurrence's vector per layer, stored,
checkpointed, on the local engine or Ray."""
