// graphmend_deploy_runner PACKAGE.pt2 INPUTS.pt OUTPUTS.pt [--device cpu|cuda[:N]] [--warmup N] [--iters N]
//
// Loads an AOTInductor package with torch::inductor::AOTIModelPackageLoader (no Python), reads the
// flat list of input tensors that the validator saved with torch.save, runs the model once for the
// outputs (written with torch::pickle_save, which torch.load reads), then times `iters` calls after
// `warmup` calls. Prints `key value` lines on stdout: calls, median_ms, min_ms, max_ms, outputs.
// Exit status: 0 ran, 2 bad arguments or unreadable files, 3 the model failed to load or run.
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <torch/serialize.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

namespace {

int usage(const std::string& why) {
  std::cerr << "graphmend_deploy_runner: " << why
            << "\nusage: graphmend_deploy_runner PACKAGE.pt2 INPUTS.pt OUTPUTS.pt [--device D] [--warmup N] "
               "[--iters N]\n";
  return 2;
}

bool parse_count(const std::string& text, int& out) {
  char* end = nullptr;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || value < 0 || value > 1000000) return false;
  out = static_cast<int>(value);
  return true;
}

// Times are host times of finished work: wait for the device's queue (torch_cpu dispatches to CUDA
// through its hooks, so the runner needs no CUDA headers).
void synchronize(const c10::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> positional;
  std::string device_name = "cpu";
  int warmup = 3;
  int iters = 20;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--device" || arg == "--warmup" || arg == "--iters") {
      if (i + 1 >= argc) return usage(arg + " needs a value");
      const std::string value = argv[++i];
      if (arg == "--device") {
        device_name = value;
      } else if (!parse_count(value, arg == "--warmup" ? warmup : iters)) {
        return usage(arg + " needs a whole number, got `" + value + "`");
      }
    } else if (!arg.empty() && arg[0] == '-') {
      return usage("unknown option `" + arg + "`");
    } else {
      positional.push_back(arg);
    }
  }
  if (positional.size() != 3) return usage("expected PACKAGE INPUTS OUTPUTS");
  if (iters < 1) return usage("--iters must be at least 1");

  std::ifstream input_file(positional[1], std::ios::binary);
  if (!input_file) return usage("cannot read inputs " + positional[1]);
  const std::vector<char> input_bytes((std::istreambuf_iterator<char>(input_file)), std::istreambuf_iterator<char>());

  try {
    const c10::Device device(device_name);
    std::vector<at::Tensor> inputs;
    const c10::IValue loaded = torch::pickle_load(input_bytes);
    if (!loaded.isList()) {
      std::cerr << "graphmend_deploy_runner: inputs must be a list of tensors\n";
      return 2;
    }
    for (const c10::IValue& item : loaded.toListRef()) {
      if (!item.isTensor()) {
        std::cerr << "graphmend_deploy_runner: inputs must be a list of tensors\n";
        return 2;
      }
      inputs.push_back(item.toTensor().to(device));
    }

    const c10::DeviceIndex index = device.is_cuda() ? device.index() : -1;
    torch::inductor::AOTIModelPackageLoader loader(positional[0], "model", false, 1, index);
    torch::NoGradGuard no_grad;

    std::vector<at::Tensor> outputs = loader.run(inputs);
    synchronize(device);
    for (int i = 0; i < warmup; ++i) loader.run(inputs);
    synchronize(device);
    std::vector<double> samples_ms;
    samples_ms.reserve(static_cast<std::size_t>(iters));
    for (int i = 0; i < iters; ++i) {
      const auto start = std::chrono::steady_clock::now();
      loader.run(inputs);
      synchronize(device);
      const auto stop = std::chrono::steady_clock::now();
      samples_ms.push_back(std::chrono::duration<double, std::milli>(stop - start).count());
    }

    // A tuple: torch.load(weights_only=True) reads it (lists carry type tags that need torch.jit globals).
    std::vector<c10::IValue> cpu_outputs;
    for (const at::Tensor& tensor : outputs) cpu_outputs.emplace_back(tensor.detach().to(at::kCPU));
    const std::vector<char> output_bytes = torch::pickle_save(c10::ivalue::Tuple::create(std::move(cpu_outputs)));
    std::ofstream output_file(positional[2], std::ios::binary | std::ios::trunc);
    output_file.write(output_bytes.data(), static_cast<std::streamsize>(output_bytes.size()));
    if (!output_file) {
      std::cerr << "graphmend_deploy_runner: cannot write outputs " << positional[2] << "\n";
      return 2;
    }

    std::vector<double> sorted = samples_ms;
    std::sort(sorted.begin(), sorted.end());
    const std::size_t n = sorted.size();
    const double median = n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0;
    std::cout << "calls " << n << "\n"
              << "median_ms " << median << "\n"
              << "min_ms " << sorted.front() << "\n"
              << "max_ms " << sorted.back() << "\n"
              << "outputs " << outputs.size() << "\n";
    return 0;
  } catch (const std::exception& error) {
    std::cerr << "graphmend_deploy_runner: " << error.what() << "\n";
    return 3;
  }
}
