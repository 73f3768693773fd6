"""The PyTorch reference of the LaCT model (lact_reference), its safetensors reader/writer and the scripts that
check it against the official fixtures and make the engine's parity cases."""
