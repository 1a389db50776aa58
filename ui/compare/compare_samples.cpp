#include "cflow/ui/compare_samples.h"

namespace cflow::ui {
namespace {

// Written for this app in the simple vocabulary of children's stories (the zoo's training
// corpus, resources/training/make_corpus.py, is generated and not shipped).
constexpr const char16_t* kStories =
    u"Once upon a time, there was a little girl named Lily. She loved to play in the park with her red ball. "
    u"One day, the ball rolled under a big tree. Lily looked for it, but she could not find it. She felt sad. "
    u"Then a small dog came and barked. The dog ran to the tree and found the ball. Lily was so happy. "
    u"She said, \"Thank you, dog!\" They played together all day, and they became best friends.\n\n"
    u"Tom had a toy car that he liked very much. Every morning he took it to the kitchen and drove it around "
    u"the table. One day, the car broke. Tom cried and ran to his mom. His mom smiled and said, \"Let us fix it "
    u"together.\" They found some glue and worked very hard. Soon the car was good again. Tom hugged his mom. "
    u"He learned that when something breaks, you can try to fix it.\n\n"
    u"There was a big bird who lived in a tall tree. The bird liked to sing in the sun. One day, it started to "
    u"rain. The bird was cold and wet. A kind squirrel saw the bird and said, \"Come into my home, it is warm "
    u"here.\" The bird went inside and was not cold anymore. When the sun came back, the bird sang a happy song "
    u"for the squirrel. From that day on, they were good friends and helped each other.\n\n"
    u"Sam and Mia went to the beach with their dad. They wanted to build a big sand castle. Sam got the water "
    u"and Mia made the walls. Then a wave came and took the castle away. Mia was sad, but Sam said, \"We can "
    u"build a new one, and it will be even better.\" They worked together again and made the best castle on the "
    u"beach. Dad took a picture, and they all laughed.";

constexpr const char16_t* kDialogues =
    u"\"Can I have a cookie?\" asked Ben. \"Yes, but only one,\" said his mom. Ben took the cookie and said "
    u"thank you. He gave half of it to his little sister, and she smiled.\n\n"
    u"\"Where is my hat?\" said the old man. The cat looked at him and jumped onto the bed. Under the bed was "
    u"the hat. The old man laughed and said, \"You are a smart cat.\"\n\n"
    u"\"Let us go to the park,\" said Anna. \"It is too hot,\" said Max. \"Then we can sit under a tree,\" said "
    u"Anna. They went to the park and sat in the shade, and they ate apples and watched the ducks.";

} // namespace

const std::vector<TextSample>& bundled_text_samples() {
    static const std::vector<TextSample> samples = {
        {QStringLiteral("bundled: short stories"), QString::fromUtf16(kStories)},
        {QStringLiteral("bundled: dialogues"), QString::fromUtf16(kDialogues)},
    };
    return samples;
}

} // namespace cflow::ui
