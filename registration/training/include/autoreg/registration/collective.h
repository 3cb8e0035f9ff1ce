// What data-parallel training and search need of the processes they run in: this
// process's rank among `world` processes, and sums across them. Training and search
// call it; parallel/ implements it on LibTorch's c10d (Gloo, NCCL), so that neither
// registration/ nor search/ includes c10d. Without one, a run is a single process.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

namespace autoreg::registration {

class Collective {
 public:
  virtual ~Collective() = default;
  virtual int rank() const = 0;
  virtual int world() const = 0;
  // Replaces each tensor by its sum over the ranks, in place. The tensors may differ in
  // dtype and shape; an implementation packs them into a few buffers (a step costs a few
  // collectives, not one per parameter). Every rank passes the same shapes, in order.
  virtual void sum(std::vector<at::Tensor>& tensors) = 0;
  // Copies rank 0's tensors into every rank's, in place (the starting weights).
  virtual void broadcast(std::vector<at::Tensor>& tensors) = 0;
  // Whether any rank says yes (a stop asked for on one of them).
  virtual bool any(bool mine) = 0;
  // Waits for every rank, longer than a collective's timeout (one rank preprocessing
  // while the others wait).
  virtual void barrier() = 0;
};

}  // namespace autoreg::registration
