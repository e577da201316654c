#include "probe.pb.h"

int main() {
  attnlab::probe::Probe p;
  p.set_text("x");
  return p.SerializeAsString().empty() ? 1 : 0;
}
