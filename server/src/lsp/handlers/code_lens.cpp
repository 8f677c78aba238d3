// textDocument/codeLens: the validator's lenses ("validate this model") over a document.
#include "lsp/handlers/handlers.h"

namespace graphmend::lsp::handlers {

void code_lens(Session& session, const json& id, const json& params) {
  OpenDocument& document = session.document_for(params);
  if (!session.settings.validate_enable) return session.reply(id, json::array());
  session.validator->set_python(session.settings.validator_python.value_or(""));
  session.reply(id, session.validator->code_lenses(document.uri, *document.snapshot->text,
                                                   session.validation_factories(document)));
}

}  // namespace graphmend::lsp::handlers
