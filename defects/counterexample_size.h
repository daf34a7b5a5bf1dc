// File: counterexample_size.h
// The size of a shrunk counterexample in a few words, for the kill table: the shapes of a
// kernel case ("B=1 H=1 KH=1 Sq=1 Skv=2 D=1"), the commands of a cache sequence and their
// largest shape ("4 commands, B=2 KH=1 D=1"), the decoder and stream of a generation case
// ("gpt2 L=1 H=1 KH=1, prompt 1, 2 new tokens"), the appends of a growth case.
#ifndef KVCHECK_DEFECTS_COUNTEREXAMPLE_SIZE_H_
#define KVCHECK_DEFECTS_COUNTEREXAMPLE_SIZE_H_

#include <string>

namespace kvcheck::defects {

// "" when the text is none of the kinds above.
std::string CounterexampleSize(const std::string& counterexample);

}  // namespace kvcheck::defects

#endif  // KVCHECK_DEFECTS_COUNTEREXAMPLE_SIZE_H_
