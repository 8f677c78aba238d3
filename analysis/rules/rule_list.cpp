// The registry of rules. A new rule adds its file in this folder and one line here.
#include "rule.h"

namespace graphmend {

const Rule& rule_GM001();
const Rule& rule_GM101();
const Rule& rule_GM102();
const Rule& rule_GM103();
const Rule& rule_GM104();
const Rule& rule_GM105();
const Rule& rule_GM201();
const Rule& rule_GM202();
const Rule& rule_GM203();
const Rule& rule_GM204();
const Rule& rule_GM205();
const Rule& rule_GM301();
const Rule& rule_GM302();
const Rule& rule_GM401();
const Rule& rule_GM402();
const Rule& rule_GM403();
const Rule& rule_GM404();
const Rule& rule_GM405();
const Rule& rule_GM406();
const Rule& rule_GM501();
const Rule& rule_GM502();
const Rule& rule_GM503();
const Rule& rule_GM504();
const Rule& rule_GM505();
const Rule& rule_GM506();
const Rule& rule_GM601();
const Rule& rule_GM602();
const Rule& rule_GM603();
const Rule& rule_GM604();
const Rule& rule_GM605();
const Rule& rule_GM606();
const Rule& rule_GM607();
const Rule& rule_GM608();
const Rule& rule_GM609();
const Rule& rule_GM610();
const Rule& rule_GM611();
const Rule& rule_GM612();
const Rule& rule_GM613();
const Rule& rule_GM614();
const Rule& rule_GM615();
const Rule& rule_GM616();

const std::vector<const Rule*>& registered_rules() {
  static const std::vector<const Rule*> rules{
      &rule_GM001(),  // unused noqa: run by the analyzer after the others (no node types)
      &rule_GM101(), &rule_GM102(), &rule_GM103(), &rule_GM104(), &rule_GM105(), &rule_GM201(), &rule_GM202(),
      &rule_GM203(), &rule_GM204(), &rule_GM205(), &rule_GM301(), &rule_GM302(), &rule_GM401(), &rule_GM402(),
      &rule_GM403(), &rule_GM404(), &rule_GM405(), &rule_GM406(), &rule_GM501(), &rule_GM502(), &rule_GM503(),
      &rule_GM504(), &rule_GM505(), &rule_GM506(), &rule_GM601(), &rule_GM602(), &rule_GM603(), &rule_GM604(),
      &rule_GM605(), &rule_GM606(), &rule_GM607(), &rule_GM608(), &rule_GM609(), &rule_GM610(), &rule_GM611(),
      &rule_GM612(), &rule_GM613(), &rule_GM614(), &rule_GM615(), &rule_GM616(),
  };
  return rules;
}

}  // namespace graphmend
