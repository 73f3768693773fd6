// The one converter of official checkpoints (tools/convert_checkpoint.py, Python with torch), run as a program
// by its argument vector from the checkout lact was built from, whatever the working folder.
#pragma once

#include <string>

namespace lact {

// The Python that runs it: $LACT_PYTHON, else the one lact was configured with (CMake's LACT_PYTHON).
std::string converter_python();
// tools/convert_checkpoint.py of the checkout lact was built from.
std::string converter_script();

// Converts `checkpoint` (.pt) to `output` (.safetensors; written beside it under a temporary name, then renamed
// into place, so a failed conversion leaves nothing under `output`). `config`: a YAML/JSON file or a built-in
// name, empty for an official checkpoint's own (known from its file name). Returns the converter's summary line;
// Error with the converter's one-line reason when it fails.
std::string convert_checkpoint(const std::string& checkpoint, const std::string& config, const std::string& output);

// LPIPS's two published files (torchvision's AlexNet or VGG16, the lpips package's v0.1 linear layers of that
// backbone, told from the files) converted into the one file `--lpips` reads, as convert_checkpoint writes
// (tools/lpips_weights.py).
std::string convert_lpips_weights(const std::string& backbone, const std::string& linear, const std::string& output);

}  // namespace lact
